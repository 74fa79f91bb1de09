//! Regular sub-grammars become lexemes (issue 19).
//!
//! A front end such as GBNF lowers every character to a lexeme of its own, and the Earley
//! parser then pays one step per byte. [`lexify`] finds the nonterminals whose language is
//! regular (off every recursion cycle, or recursing only on themselves in left- or
//! right-linear form, as the star/plus helpers and `ws ::= [ ] ws | ""` do), builds one
//! [`RegexAst`] per such rule (shared sub-rules are [`RegexAst::Shared`] nodes: a DAG;
//! the helpers of a bounded repetition, tail chains or doubling halves, fold into one
//! `x{m,n}`) and replaces the maximal ones by lexemes named after the rule.
//!
//! Exactness: the lexer ends a greedy lexeme `L` only when the next byte extends no live
//! lexeme. A rule may become a lexeme only if no string `w` of `L` and byte `c` that may
//! follow `L` in the grammar make `w·c` a prefix of a string of a lexeme `M` the parser may
//! allow at the same point (`M = L` included). Such an `M` shares a first byte with `L`,
//! so every pair of lexemes with a common first byte is checked (conservative). A rule in
//! conflict stays a rule and its children are tried instead, to a fixpoint; one-code-point
//! lexemes never conflict (UTF-8 is prefix-free), so the fallback is the front end's grammar.
//!
//! Cost: FIRST/FOLLOW byte sets by fixpoint over the rules, then one walk over derivative
//! pairs per checked lexeme pair (capped; a capped pair counts as a conflict), paid from
//! the compile budget. On exhaustion the grammar is returned unchanged.

use crate::sync::Arc;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use hashbrown::HashMap;

use crate::error::{GrammarError, GrammarErrorKind, LimitKind};
use crate::ir::{GrammarIr, IrLexeme, IrNonterminal, IrSymbol, LexemeMode};
use crate::limits::{CompileBudget, Limits};
use crate::regex::{ByteClasses, ExprId, ExprSet, RegexAst};

/// Most derivative pairs one lexeme pair's check explores.
const MAX_PAIRS: usize = 4096;
/// Most derivative steps (pairs times byte-class blocks) one lexeme pair's check takes.
const MAX_STEPS: usize = 1 << 16;
/// Estimated heap bytes of one regex node built here.
const NODE_BYTES: usize = 64;

/// Replace the maximal rules whose language is regular by lexemes, where the lexer's
/// greedy ending keeps the grammar's language and every prefix's viability exactly.
///
/// Whitespace rules stay explicit lexemes (GBNF whitespace is part of the language, never
/// `%ignore`d: ignoring it would accept texts the grammar rejects). A grammar with an
/// ignored lexeme is returned unchanged (it may come between any two lexemes).
pub fn lexify(
    ir: GrammarIr,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<GrammarIr, GrammarError> {
    lexify_compiled(ir, limits, budget).map(|(ir, _)| ir)
}

/// The expressions [`lexify`]'s analysis compiled, for the grammar build to reuse (every
/// lexeme of the result compiled once).
pub(crate) struct Compiled {
    /// The analysis' store (fuel and memory caps as the grammar build sets them).
    pub(crate) exprs: ExprSet,
    /// What it compiled.
    pub(crate) known: Known,
}

/// Shared regexes compiled in [`Compiled::exprs`], by address (the `Arc` is kept, so the
/// address is not reused).
pub(crate) struct Known(HashMap<usize, (Arc<RegexAst>, ExprId)>);

impl Known {
    /// The expression of `regex` in [`Compiled::exprs`], if the analysis compiled it.
    pub(crate) fn get(&self, regex: &RegexAst) -> Option<ExprId> {
        match regex {
            RegexAst::Shared(a) => self.0.get(&(Arc::as_ptr(a) as usize)).map(|x| x.1),
            _ => None,
        }
    }
}

/// [`lexify`], and the analysis' compiled expressions when it ran.
pub(crate) fn lexify_compiled(
    ir: GrammarIr,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<(GrammarIr, Option<Compiled>), GrammarError> {
    // An ignored lexeme may come between any two lexemes: one lexeme in their place would
    // refuse it there.
    if ir.lexemes.iter().any(|l| l.ignore) {
        return Ok((ir, None));
    }
    let regular = regular_nonterminals(&ir);
    if regular.order.is_empty() {
        return Ok((ir, None));
    }
    // Half of what is left: the grammar build needs the rest.
    let fuel = budget.left() / 2;
    let mut exprs = ExprSet::new(limits);
    exprs.set_fuel(fuel);
    exprs.set_weight(crate::regex::COMPILE_REGEX_WEIGHT);
    exprs.max_memory = limits.max_memory_bytes / 3;
    let mut ir = ir;
    lower_patterns(&mut ir, &mut exprs);
    let regexes = match build_regexes(&ir, &regular.order, limits.max_repeat, budget) {
        Ok(r) => r,
        Err(k) => return Err(GrammarError::limit(k)),
    };
    // The candidates copy the nonterminals without their names (no allocation each); the
    // result gets them back (every candidate keeps every nonterminal, in order).
    let nameless = ir
        .nonterminals
        .iter()
        .map(|n| IrNonterminal {
            name: String::new(),
            span: n.span,
        })
        .collect();
    let named = core::mem::replace(&mut ir.nonterminals, nameless);
    let rejected = vec![false; ir.nonterminals.len()];
    let mut memo = Memo::default();
    let result = fuse(
        &ir, &named, &regular, rejected, &regexes, &mut exprs, &mut memo,
    );
    let lexified = result.unwrap_or(ir);
    // Then a lexeme and the optional lexemes right after it (`"{" ws`) become one.
    let merged = merge_runs(&lexified, &mut exprs, &mut memo).ok().flatten();
    budget.settle(budget.left().saturating_sub(fuel - exprs.fuel_left()));
    let mut out = merged.unwrap_or(lexified);
    out.nonterminals = named;
    budget
        .charge(out.heap_bytes())
        .map_err(GrammarError::limit)?;
    let compiled = Compiled {
        exprs,
        known: Known(memo.compiled),
    };
    Ok((out, Some(compiled)))
}

/// The candidate grammar whose lexified rules (regular, not `rejected`, the outermost ones
/// reachable from the start) become lexemes without a conflict, rejecting each rule whose
/// lexeme conflicts and trying again (its children next, unless rejected too), to a
/// fixpoint; `None` if no rule is left or the analysis runs out of its caps.
fn fuse(
    ir: &GrammarIr,
    named: &[IrNonterminal],
    regular: &Regular,
    mut rejected: Vec<bool>,
    regexes: &[Option<Arc<RegexAst>>],
    exprs: &mut ExprSet,
    memo: &mut Memo,
) -> Option<GrammarIr> {
    loop {
        let (cand, origin) = candidate(ir, named, &regular.is_regular, &rejected, regexes);
        if origin.iter().all(Option::is_none) {
            return None;
        }
        let new = |l: u32| origin.get(l as usize).copied().flatten().is_some();
        let conflicts = analyze(&cand, exprs, memo, Some(&new), true).ok()?;
        if conflicts.is_empty() {
            return Some(cand);
        }
        for c in conflicts {
            let nt = [c.first, c.second]
                .iter()
                .find_map(|&l| origin.get(l as usize).copied().flatten());
            if let Some(nt) = nt {
                rejected[nt as usize] = true;
            }
        }
    }
}

/// Inside the rules, each lexeme followed by nullable lexemes (`"," ws`) becomes one lexeme
/// (one per distinct run), where no conflict forbids it; `None` if no run merges.
fn merge_runs(
    ir: &GrammarIr,
    exprs: &mut ExprSet,
    memo: &mut Memo,
) -> Result<Option<GrammarIr>, AnalysisError> {
    let mut nullable = vec![false; ir.lexemes.len()];
    for (l, lex) in ir.lexemes.iter().enumerate() {
        if is_plain(lex) {
            let e = memo.compile(exprs, &lex.regex, l)?;
            nullable[l] = exprs.is_nullable(e);
        }
    }
    if !nullable.iter().any(|&n| n) {
        return Ok(None);
    }
    let arcs: Vec<Arc<RegexAst>> = ir
        .lexemes
        .iter()
        .map(|l| match &l.regex {
            RegexAst::Shared(a) => Arc::clone(a),
            r => Arc::new(r.clone()),
        })
        .collect();
    let mut rejected: hashbrown::HashSet<Vec<u32>> = hashbrown::HashSet::new();
    loop {
        let mut out = GrammarIr {
            nonterminals: ir.nonterminals.clone(),
            rules: Vec::with_capacity(ir.rules.len()),
            lexemes: ir.lexemes.clone(),
            start: ir.start,
            #[cfg(feature = "text-token-ids")]
            id_tokens: ir.id_tokens.clone(),
        };
        let mut runs: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut origin: Vec<Option<Vec<u32>>> = vec![None; ir.lexemes.len()];
        for r in &ir.rules {
            let mut rhs = Vec::with_capacity(r.rhs.len());
            let mut i = 0;
            while i < r.rhs.len() {
                let mut j = i + 1;
                if let IrSymbol::Lexeme(x) = r.rhs[i]
                    && is_plain(&ir.lexemes[x as usize])
                {
                    while let Some(IrSymbol::Lexeme(y)) = r.rhs.get(j) {
                        if !nullable[*y as usize] {
                            break;
                        }
                        j += 1;
                    }
                }
                let key: Vec<u32> = r.rhs[i..j]
                    .iter()
                    .filter_map(|s| match *s {
                        IrSymbol::Lexeme(l) => Some(l),
                        IrSymbol::Nonterminal(_) => None,
                    })
                    .collect();
                if key.len() < 2 || rejected.contains(&key) {
                    rhs.push(r.rhs[i]);
                    i += 1;
                    continue;
                }
                let id = match runs.get(&key) {
                    Some(&id) => id,
                    None => {
                        let mut name = String::new();
                        for (k, &l) in key.iter().enumerate() {
                            if k > 0 {
                                name.push(' ');
                            }
                            name.push_str(&ir.lexemes[l as usize].name);
                        }
                        let parts = key
                            .iter()
                            .map(|&l| RegexAst::Shared(Arc::clone(&arcs[l as usize])))
                            .collect();
                        let arc = Arc::new(RegexAst::Concat(parts));
                        // Its expression from its parts' (compiled above).
                        let mut e = ExprId::EPSILON;
                        for &l in key.iter().rev() {
                            let part = memo.compile(exprs, &ir.lexemes[l as usize].regex, 0)?;
                            e = exprs.mk_concat(part, e)?;
                        }
                        memo.compiled
                            .insert(Arc::as_ptr(&arc) as usize, (Arc::clone(&arc), e));
                        let id = out.add_lexeme(IrLexeme {
                            name,
                            regex: RegexAst::Shared(arc),
                            mode: LexemeMode::Greedy,
                            ignore: false,
                            span: ir.lexemes[key[0] as usize].span,
                        });
                        origin.push(Some(key.clone()));
                        runs.insert(key, id);
                        id
                    }
                };
                rhs.push(IrSymbol::Lexeme(id));
                i = j;
            }
            out.add_rule(r.lhs, rhs);
        }
        if runs.is_empty() {
            return Ok(None);
        }
        let new = |l: u32| origin.get(l as usize).is_some_and(Option::is_some);
        let conflicts = analyze(&out, exprs, memo, Some(&new), true)?;
        if conflicts.is_empty() {
            return Ok(Some(drop_unused_lexemes(out)));
        }
        for c in conflicts {
            let key = [c.first, c.second]
                .iter()
                .find_map(|&l| origin.get(l as usize).cloned().flatten());
            if let Some(key) = key {
                rejected.insert(key);
            }
        }
    }
}

/// `ir` without the lexemes no rule uses (ignored ones stay), renumbered.
fn drop_unused_lexemes(mut ir: GrammarIr) -> GrammarIr {
    let mut used: Vec<bool> = ir.lexemes.iter().map(|l| l.ignore).collect();
    for r in &ir.rules {
        for s in &r.rhs {
            if let IrSymbol::Lexeme(l) = *s {
                used[l as usize] = true;
            }
        }
    }
    let mut map = vec![u32::MAX; used.len()];
    let mut next = 0u32;
    for (l, &u) in used.iter().enumerate() {
        if u {
            map[l] = next;
            next += 1;
        }
    }
    let lexemes = core::mem::take(&mut ir.lexemes);
    ir.lexemes = lexemes
        .into_iter()
        .zip(&used)
        .filter(|(_, u)| **u)
        .map(|(l, _)| l)
        .collect();
    for r in &mut ir.rules {
        for s in &mut r.rhs {
            if let IrSymbol::Lexeme(l) = s {
                *l = map[*l as usize];
            }
        }
    }
    ir
}

/// How two lexemes the parser may allow at the same point get in each other's way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConflictKind {
    /// A string of `first`, followed by a byte that may follow `first` in the grammar, is a
    /// prefix of a string of `second` (the lexer's greedy ending reads on into `second`).
    ProperPrefix,
    /// Some text matches both.
    SameText,
    /// `first` is lazy and ends before `second`, which some string extends, can.
    LazyShadow,
}

/// A pair of lexemes in conflict (ids index [`GrammarIr::lexemes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LexemeConflict {
    /// The lexeme that is shadowed or read past.
    pub first: u32,
    /// The lexeme that shadows it.
    pub second: u32,
    /// How.
    pub kind: ConflictKind,
}

/// Every conflict between lexemes the parser may allow at the same point (conservatively:
/// lexemes used by the grammar that share a first byte), sorted. A pair whose check runs
/// past its caps is reported as [`ConflictKind::ProperPrefix`] (or
/// [`ConflictKind::LazyShadow`] for a lazy `first`).
pub fn lexeme_conflicts(
    ir: &GrammarIr,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<Vec<LexemeConflict>, GrammarError> {
    let mut exprs = ExprSet::new(limits);
    let fuel = budget.left();
    exprs.set_fuel(fuel);
    exprs.set_weight(crate::regex::COMPILE_REGEX_WEIGHT);
    exprs.max_memory = limits.max_memory_bytes / 3;
    let mut memo = Memo::default();
    let got = analyze(ir, &mut exprs, &mut memo, None, false);
    budget.settle(exprs.fuel_left());
    let mut got = got.map_err(|e| match e {
        AnalysisError::Limit(k) => crate::limits::compile_fuel_error(GrammarError::limit(k)),
        AnalysisError::Regex(l, msg) => GrammarError::new(
            GrammarErrorKind::InvalidRegex,
            alloc::format!("in {}: {msg}", ir.lexemes[l].name),
        ),
    })?;
    got.sort_unstable();
    got.dedup();
    Ok(got)
}

// ---------------------------------------------------------------------------------------
// Which nonterminals are regular, and their regexes.

struct Regular {
    is_regular: Vec<bool>,
    /// The regular nonterminals, each after those it uses.
    order: Vec<u32>,
}

/// A lexeme a regex may include: greedy, not ignored, not a special token.
fn is_plain(lex: &IrLexeme) -> bool {
    fn special(r: &RegexAst) -> bool {
        match r {
            RegexAst::Literal(b) => b.first() == Some(&0xFF),
            RegexAst::Or(xs) => xs.iter().any(special),
            _ => false,
        }
    }
    lex.mode == LexemeMode::Greedy && !lex.ignore && !special(&lex.regex)
}

fn rules_by_lhs(ir: &GrammarIr) -> ByLhs {
    // Counting sort by left-hand side: two vectors, not one per nonterminal.
    let n = ir.nonterminals.len();
    let mut start = vec![0usize; n + 1];
    for r in &ir.rules {
        if let Some(c) = start.get_mut(r.lhs as usize + 1) {
            *c += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut next = start.clone();
    let mut rules = vec![0usize; start[n]];
    for (i, r) in ir.rules.iter().enumerate() {
        if let Some(at) = next.get_mut(r.lhs as usize) {
            rules[*at] = i;
            *at += 1;
        }
    }
    ByLhs { start, rules }
}

/// The rule indices of each nonterminal, in rule order: `by[nt]`.
struct ByLhs {
    /// `start[nt]..start[nt + 1]` is `nt`'s part of `rules`.
    start: Vec<usize>,
    rules: Vec<usize>,
}

impl ByLhs {
    /// Each nonterminal's rules, in nonterminal order.
    fn iter(&self) -> impl Iterator<Item = &[usize]> {
        self.start
            .windows(2)
            .map(|w| self.rules.get(w[0]..w[1]).unwrap_or(&[]))
    }
}

impl core::ops::Index<usize> for ByLhs {
    type Output = [usize];
    fn index(&self, nt: usize) -> &[usize] {
        match (self.start.get(nt), self.start.get(nt + 1)) {
            (Some(&a), Some(&b)) => self.rules.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// How a rule of `n` uses `n`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Recursion {
    None,
    /// `n → n α`.
    Left,
    /// `n → α n`.
    Right,
    /// `n → n`.
    Unit,
    Other,
}

fn recursion(n: u32, rhs: &[IrSymbol]) -> Recursion {
    let me = IrSymbol::Nonterminal(n);
    let count = rhs.iter().filter(|&&s| s == me).count();
    match count {
        0 => Recursion::None,
        1 if rhs.len() == 1 => Recursion::Unit,
        1 if rhs.first() == Some(&me) => Recursion::Left,
        1 if rhs.last() == Some(&me) => Recursion::Right,
        _ => Recursion::Other,
    }
}

fn regular_nonterminals(ir: &GrammarIr) -> Regular {
    let n = ir.nonterminals.len();
    let by = rules_by_lhs(ir);
    let mut ok = vec![true; n];
    let mut deps: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (nt, rules) in by.iter().enumerate() {
        let nt32 = nt as u32;
        let (mut left, mut right) = (false, false);
        for &ri in rules {
            let rhs = &ir.rules[ri].rhs;
            match recursion(nt32, rhs) {
                Recursion::Left => left = true,
                Recursion::Right => right = true,
                Recursion::Other => ok[nt] = false,
                Recursion::None | Recursion::Unit => {}
            }
            for s in rhs {
                match *s {
                    IrSymbol::Lexeme(l) => {
                        if !ir.lexemes.get(l as usize).is_some_and(is_plain) {
                            ok[nt] = false;
                        }
                    }
                    IrSymbol::Nonterminal(m) if m != nt32 => deps[nt].push(m),
                    IrSymbol::Nonterminal(_) => {}
                }
            }
        }
        if left && right {
            ok[nt] = false;
        }
        deps[nt].sort_unstable();
        deps[nt].dedup();
    }
    let mut pending: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut users: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (nt, d) in deps.iter().enumerate() {
        for &m in d {
            if let Some(u) = users.get_mut(m as usize) {
                u.push(nt as u32);
            }
        }
    }
    let mut is_regular = vec![false; n];
    let mut order = Vec::new();
    let mut queue: Vec<u32> = (0..n as u32)
        .filter(|&i| ok[i as usize] && pending[i as usize] == 0)
        .collect();
    while let Some(x) = queue.pop() {
        is_regular[x as usize] = true;
        order.push(x);
        for &u in &users[x as usize] {
            let p = &mut pending[u as usize];
            *p -= 1;
            if *p == 0 && ok[u as usize] {
                queue.push(u);
            }
        }
    }
    Regular { is_regular, order }
}

/// The regex of every regular nonterminal (indexed by nonterminal), built in `order`.
fn build_regexes(
    ir: &GrammarIr,
    order: &[u32],
    max_repeat: u32,
    budget: &mut CompileBudget,
) -> Result<Vec<Option<Arc<RegexAst>>>, LimitKind> {
    let by = rules_by_lhs(ir);
    let mut lex: Vec<Option<Arc<RegexAst>>> = vec![None; ir.lexemes.len()];
    let mut out: Vec<Option<Arc<RegexAst>>> = vec![None; ir.nonterminals.len()];
    let mut nodes = 0usize;
    for &nt in order {
        let mut seq =
            |rhs: &[IrSymbol], out: &[Option<Arc<RegexAst>>], nodes: &mut usize| -> RegexAst {
                let mut parts: Vec<RegexAst> = rhs
                    .iter()
                    .map(|s| {
                        *nodes += 1;
                        match *s {
                            IrSymbol::Lexeme(l) => {
                                let slot = &mut lex[l as usize];
                                let arc = slot.get_or_insert_with(|| {
                                    Arc::new(ir.lexemes[l as usize].regex.clone())
                                });
                                RegexAst::Shared(Arc::clone(arc))
                            }
                            IrSymbol::Nonterminal(m) => match out.get(m as usize) {
                                Some(Some(a)) => RegexAst::Shared(Arc::clone(a)),
                                _ => RegexAst::Nothing,
                            },
                        }
                    })
                    .collect();
                *nodes += 1;
                fold_repeats(&mut parts, max_repeat);
                match parts.len() {
                    0 => RegexAst::Epsilon,
                    1 => parts.pop().unwrap_or(RegexAst::Nothing),
                    _ => RegexAst::Concat(parts),
                }
            };
        let (mut bases, mut alphas, mut left) = (Vec::new(), Vec::new(), true);
        for &ri in &by[nt as usize] {
            let rhs = &ir.rules[ri].rhs;
            match recursion(nt, rhs) {
                Recursion::None => bases.push(seq(rhs, &out, &mut nodes)),
                Recursion::Left => alphas.push(seq(&rhs[1..], &out, &mut nodes)),
                Recursion::Right => {
                    left = false;
                    alphas.push(seq(&rhs[..rhs.len() - 1], &out, &mut nodes));
                }
                Recursion::Unit | Recursion::Other => {}
            }
        }
        let or = |mut xs: Vec<RegexAst>| match xs.len() {
            1 => xs.pop().unwrap_or(RegexAst::Nothing),
            // `ε | x{1,n}` is `x{0,n}` (a bounded repetition's tail helper).
            2 if matches!(xs[0], RegexAst::Epsilon) => match repetition(&xs[1]) {
                Some((x, 1, max)) => shared_repeat(x, 0, max),
                _ => RegexAst::Or(xs),
            },
            _ => RegexAst::Or(xs),
        };
        let base = or(bases);
        let regex = if alphas.is_empty() {
            base
        } else {
            nodes += 2;
            let rep = RegexAst::Repeat(alloc::boxed::Box::new(or(alphas)), 0, None);
            let mut parts = if left {
                vec![base, rep]
            } else {
                vec![rep, base]
            };
            fold_repeats(&mut parts, max_repeat);
            match parts.len() {
                1 => parts.pop().unwrap_or(RegexAst::Nothing),
                _ => RegexAst::Concat(parts),
            }
        };
        out[nt as usize] = Some(Arc::new(regex));
        budget.spend(nodes as u64)?;
        budget.charge(nodes.saturating_mul(NODE_BYTES))?;
        nodes = 0;
    }
    Ok(out)
}

/// `part` as `x{min,max}` of a shared `x` (`max` `None`: unbounded): a repetition of a
/// shared node, or a shared node (one copy).
fn repetition(part: &RegexAst) -> Option<(&Arc<RegexAst>, u32, Option<u32>)> {
    fn rep(r: &RegexAst) -> Option<(&Arc<RegexAst>, u32, Option<u32>)> {
        match r {
            RegexAst::Repeat(b, min, max) => match &**b {
                RegexAst::Shared(x) => Some((x, *min, *max)),
                _ => None,
            },
            _ => None,
        }
    }
    match part {
        RegexAst::Shared(a) => rep(a).or(Some((a, 1, Some(1)))),
        r => rep(r),
    }
}

/// `x{min,max}` (one copy: `x` itself).
fn shared_repeat(x: &Arc<RegexAst>, min: u32, max: Option<u32>) -> RegexAst {
    let x = RegexAst::Shared(Arc::clone(x));
    if (min, max) == (1, Some(1)) {
        return x;
    }
    RegexAst::Repeat(alloc::boxed::Box::new(x), min, max)
}

/// Drop the `ε` parts of a concatenation and merge adjacent repetitions of one shared node
/// where one of them is a repetition (`x x{0,2}` is `x{1,3}`; `x x` stays), within
/// `max_repeat`: the tail helpers of a bounded repetition (`t_k → ε | x t_{k-1}`) become
/// one `x{0,k}`, not `k` nested alternatives.
fn fold_repeats(parts: &mut Vec<RegexAst>, max_repeat: u32) {
    if parts.len() < 2 {
        return;
    }
    let mut out: Vec<RegexAst> = Vec::with_capacity(parts.len());
    for part in parts.drain(..) {
        if matches!(part, RegexAst::Epsilon) {
            continue;
        }
        let merged = match (out.last().and_then(repetition), repetition(&part)) {
            (Some((x, a, b)), Some((y, c, d)))
                if Arc::ptr_eq(x, y) && ((a, b) != (1, Some(1)) || (c, d) != (1, Some(1))) =>
            {
                let min = a.checked_add(c).filter(|&m| m <= max_repeat);
                let max = match (b, d) {
                    (Some(b), Some(d)) => b.checked_add(d).filter(|&m| m <= max_repeat).map(Some),
                    _ => Some(None),
                };
                match (min, max) {
                    (Some(min), Some(max)) => Some(shared_repeat(x, min, max)),
                    _ => None,
                }
            }
            _ => None,
        };
        match merged {
            Some(m) => {
                if let Some(last) = out.last_mut() {
                    *last = m;
                }
            }
            None => out.push(part),
        }
    }
    *parts = out;
}

/// The grammar with every regular, non-rejected nonterminal reachable from a kept rule
/// (or the start) made a lexeme, unused lexemes dropped; and, per lexeme of the result, the
/// nonterminal it was made from (`None` for the front end's lexemes).
fn candidate(
    ir: &GrammarIr,
    named: &[IrNonterminal],
    regular: &[bool],
    rejected: &[bool],
    regexes: &[Option<Arc<RegexAst>>],
) -> (GrammarIr, Vec<Option<u32>>) {
    let n = ir.nonterminals.len();
    let by = rules_by_lhs(ir);
    let lexified = |x: u32| {
        regular.get(x as usize).copied().unwrap_or(false)
            && !rejected.get(x as usize).copied().unwrap_or(true)
    };
    // Reachable nonterminals: kept (rules stay) or lexified (a lexeme).
    let mut seen = vec![false; n];
    let mut stack = vec![ir.start];
    let mut kept = Vec::new();
    let mut lexemes_of = Vec::new();
    if let Some(s) = seen.get_mut(ir.start as usize) {
        *s = true;
    }
    while let Some(x) = stack.pop() {
        if lexified(x) {
            lexemes_of.push(x);
            continue;
        }
        kept.push(x);
        for &ri in &by[x as usize] {
            for s in &ir.rules[ri].rhs {
                if let IrSymbol::Nonterminal(m) = *s
                    && !seen[m as usize]
                {
                    seen[m as usize] = true;
                    stack.push(m);
                }
            }
        }
    }
    kept.sort_unstable();
    lexemes_of.sort_unstable();
    let mut used = vec![false; ir.lexemes.len()];
    for (l, lex) in ir.lexemes.iter().enumerate() {
        used[l] = lex.ignore;
    }
    for &x in &kept {
        for &ri in &by[x as usize] {
            for s in &ir.rules[ri].rhs {
                if let IrSymbol::Lexeme(l) = *s {
                    used[l as usize] = true;
                }
            }
        }
    }
    let mut out = GrammarIr {
        nonterminals: ir.nonterminals.clone(),
        rules: Vec::new(),
        lexemes: Vec::new(),
        start: ir.start,
        #[cfg(feature = "text-token-ids")]
        id_tokens: ir.id_tokens.clone(),
    };
    let mut origin = Vec::new();
    let mut lex_map = vec![u32::MAX; ir.lexemes.len()];
    for (l, lex) in ir.lexemes.iter().enumerate() {
        if used[l] {
            lex_map[l] = out.add_lexeme(lex.clone());
            origin.push(None);
        }
    }
    let mut nt_lex = vec![u32::MAX; n];
    for &x in &lexemes_of {
        let nt = &named[x as usize];
        let regex = match &regexes[x as usize] {
            Some(a) => RegexAst::Shared(Arc::clone(a)),
            None => RegexAst::Nothing,
        };
        nt_lex[x as usize] = out.add_lexeme(IrLexeme {
            name: String::from(nt.name.as_str()),
            regex,
            mode: LexemeMode::Greedy,
            ignore: false,
            span: nt.span,
        });
        origin.push(Some(x));
    }
    for &x in &kept {
        for &ri in &by[x as usize] {
            let rhs = ir.rules[ri]
                .rhs
                .iter()
                .map(|s| match *s {
                    IrSymbol::Lexeme(l) => IrSymbol::Lexeme(lex_map[l as usize]),
                    IrSymbol::Nonterminal(m) if nt_lex[m as usize] != u32::MAX => {
                        IrSymbol::Lexeme(nt_lex[m as usize])
                    }
                    s => s,
                })
                .collect();
            out.add_rule(x, rhs);
        }
    }
    if nt_lex
        .get(ir.start as usize)
        .is_some_and(|&l| l != u32::MAX)
    {
        out.add_rule(ir.start, vec![IrSymbol::Lexeme(nt_lex[ir.start as usize])]);
    }
    (out, origin)
}

// ---------------------------------------------------------------------------------------
// FIRST/FOLLOW bytes and the pair checks.

type ByteSet = [u32; 8];

/// What the analysis remembers across candidate grammars.
#[derive(Default)]
struct Memo {
    /// Checked pairs: `(first, second, follow of first, lazy first)` → conflicts found.
    pairs: HashMap<(u32, u32, ByteSet, bool), Flags>,
    /// Compiled shared regexes, by address (the `Arc` is kept, so the address is not reused).
    compiled: HashMap<usize, (Arc<RegexAst>, ExprId)>,
    first: HashMap<ExprId, ByteSet>,
    all: HashMap<ExprId, ByteSet>,
    tail: HashMap<ExprId, ByteSet>,
    /// First bytes of expressions with `And`/`Not` may be a superset (no emptiness checks):
    /// more FOLLOW bytes, so more checks, never fewer conflicts found.
    loose_first: bool,
}

impl Memo {
    fn compile(
        &mut self,
        exprs: &mut ExprSet,
        regex: &RegexAst,
        lexeme: usize,
    ) -> Result<ExprId, AnalysisError> {
        exprs
            .compile_cached(regex, &mut self.compiled)
            .map_err(|err| match err.kind {
                crate::regex::RegexCompileErrorKind::Limit(k) => AnalysisError::Limit(k),
                _ => AnalysisError::Regex(lexeme, err.message),
            })
    }

    fn first_bytes(&mut self, exprs: &mut ExprSet, e: ExprId) -> Result<ByteSet, LimitKind> {
        if let Some(f) = self.first.get(&e) {
            return Ok(*f);
        }
        let f = if exprs.has_and_not(e) && self.loose_first {
            // A superset: the bytes whose derivative is not `NOTHING` by construction
            // (no emptiness check).
            let classes = exprs.byte_classes(&[e]);
            let mut f = [0u32; 8];
            for c in 0..classes.num_classes() {
                if exprs.derivative(e, classes.representative(c as u8))? != ExprId::NOTHING {
                    for b in 0..=255u8 {
                        if classes.class_of(b) as usize == c {
                            f[(b >> 5) as usize] |= 1 << (b & 31);
                        }
                    }
                }
            }
            f
        } else if exprs.has_and_not(e) {
            exprs.first_bytes(e)?
        } else {
            leaf_first_bytes(exprs, e)
        };
        self.first.insert(e, f);
        Ok(f)
    }

    /// Every byte some leaf of a derivative of `e` by one byte tests, or more: a superset of
    /// the bytes its strings have after the first (see [`tail_bytes`]).
    fn tail_bytes(&mut self, exprs: &ExprSet, e: ExprId) -> ByteSet {
        tail_bytes(&mut self.tail, &mut self.all, exprs, e)
    }
}

/// The children of a node.
fn children<'a>(node: &crate::regex::Node<'a>) -> ChildIter<'a> {
    use crate::regex::Node;
    match *node {
        Node::Nothing | Node::Epsilon | Node::Byte(_) | Node::ByteSet(_) => {
            ChildIter::List([].iter())
        }
        Node::Concat(a, b) => ChildIter::Two([a, b], 0),
        Node::Or(xs) | Node::And(xs) => ChildIter::List(xs.iter()),
        Node::Not(x) | Node::Repeat(x, _, _) => ChildIter::Two([x, x], 1),
    }
}

/// [`children`]' iterator.
enum ChildIter<'a> {
    /// Two children from the given index on (`1`: one child).
    Two([ExprId; 2], usize),
    List(core::slice::Iter<'a, u32>),
}

impl Iterator for ChildIter<'_> {
    type Item = ExprId;
    fn next(&mut self) -> Option<ExprId> {
        match self {
            ChildIter::Two(xs, i) => {
                let x = xs.get(*i).copied();
                *i += 1;
                x
            }
            ChildIter::List(it) => it.next().map(|&y| ExprId(y)),
        }
    }
}

/// The memoized value of `e`: every node below `e` not yet in `memo` is folded bottom-up
/// (post-order, on an explicit stack) by `fold`, which finds the values of the node's
/// children in the map it is given. An expression shares most nodes with its derivatives,
/// so each node is folded once.
fn fold_nodes<'e>(
    memo: &mut HashMap<ExprId, ByteSet>,
    exprs: &'e ExprSet,
    e: ExprId,
    mut fold: impl FnMut(&HashMap<ExprId, ByteSet>, crate::regex::Node<'e>) -> ByteSet,
) -> ByteSet {
    if let Some(f) = memo.get(&e) {
        return *f;
    }
    let mut stack = vec![(e, false)];
    while let Some((x, ready)) = stack.pop() {
        if memo.contains_key(&x) {
            continue;
        }
        let node = exprs.node(x);
        if !ready {
            stack.push((x, true));
            stack.extend(
                children(&node)
                    .filter(|c| !memo.contains_key(c))
                    .map(|c| (c, false)),
            );
            continue;
        }
        let out = fold(memo, node);
        memo.insert(x, out);
    }
    memo.get(&e).copied().unwrap_or([u32::MAX; 8])
}

/// A node's value in `memo`, or every byte if it is missing.
fn memo_or_all(memo: &HashMap<ExprId, ByteSet>, c: ExprId) -> ByteSet {
    memo.get(&c).copied().unwrap_or([u32::MAX; 8])
}

/// Every byte some leaf of `e` tests (a superset of the bytes its strings contain, and of
/// the bytes any of its derivatives tests), memoized per node in `all`.
fn all_bytes(all: &mut HashMap<ExprId, ByteSet>, exprs: &ExprSet, e: ExprId) -> ByteSet {
    use crate::regex::Node;
    fold_nodes(all, exprs, e, |all, node| {
        let mut out = [0u32; 8];
        match node {
            Node::Byte(b) => out[(b >> 5) as usize] |= 1 << (b & 31),
            Node::ByteSet(w) => {
                for (o, v) in out.iter_mut().zip(w) {
                    *o |= v;
                }
            }
            Node::Not(_) => out = [u32::MAX; 8],
            _ => {
                for c in children(&node) {
                    if let Some(f) = all.get(&c) {
                        union(&mut out, f);
                    }
                }
            }
        }
        out
    })
}

/// A superset of the bytes every leaf of a derivative of `e` by one byte tests (so of the
/// bytes its strings have after the first), from `e`'s structure and memoized per node in
/// `tail`: a leaf's derivative has no leaf; `a b` derives to `a' b`, or also to `b'` when
/// `a` is nullable; a repetition of more than one copy derives to `y' y{..}`; and a
/// complement may test anything.
fn tail_bytes(
    tail: &mut HashMap<ExprId, ByteSet>,
    all: &mut HashMap<ExprId, ByteSet>,
    exprs: &ExprSet,
    e: ExprId,
) -> ByteSet {
    use crate::regex::Node;
    fold_nodes(tail, exprs, e, |tail, node| match node {
        Node::Nothing | Node::Epsilon | Node::Byte(_) | Node::ByteSet(_) => [0u32; 8],
        Node::Concat(a, b) => {
            let mut out = memo_or_all(tail, a);
            union(&mut out, &all_bytes(all, exprs, b));
            if exprs.is_nullable(a) {
                union(&mut out, &memo_or_all(tail, b));
            }
            out
        }
        Node::Or(xs) | Node::And(xs) => {
            let mut out = [0u32; 8];
            for &y in xs {
                union(&mut out, &memo_or_all(tail, ExprId(y)));
            }
            out
        }
        Node::Not(_) => [u32::MAX; 8],
        Node::Repeat(y, _, max) => {
            let mut out = memo_or_all(tail, y);
            if max > 1 {
                union(&mut out, &all_bytes(all, exprs, y));
            }
            out
        }
    })
}

/// The first bytes of `e`, which has no `And`/`Not`: every leaf a derivative of `e` tests
/// starts a string of `e` (a non-`NOTHING` expression without them is non-empty).
fn leaf_first_bytes(exprs: &ExprSet, e: ExprId) -> ByteSet {
    let (mut leaves, mut seen, mut stack) = (Vec::new(), hashbrown::HashSet::new(), Vec::new());
    exprs.first_leaves(e, &mut leaves, &mut seen, &mut stack);
    let mut f = [0u32; 8];
    for leaf in leaves {
        union(&mut f, &exprs.leaf_bytes(leaf));
    }
    f
}

/// Replace each plain lexeme's textual pattern by the byte-level tree it compiles to, so
/// that the candidates' checks and the grammar build do not parse it again. Patterns
/// that compile to intersections or complements, or that fail, are kept.
fn lower_patterns(ir: &mut GrammarIr, exprs: &mut ExprSet) {
    for lex in &mut ir.lexemes {
        if !is_plain(lex) {
            continue;
        }
        let RegexAst::Pattern(p, flags) = &lex.regex else {
            continue;
        };
        if *flags == crate::regex::PatternFlags::default()
            && let Some(set) = ascii_class(p)
        {
            lex.regex = RegexAst::ByteSet(set);
            continue;
        }
        let Ok(e) = exprs.compile(&lex.regex) else {
            continue;
        };
        let mut memo = HashMap::new();
        if let Some(ast) = to_ast(exprs, e, 0, &mut memo) {
            lex.regex = RegexAst::Shared(ast);
        }
    }
}

/// The bytes of a positive class of ASCII ranges written as the IR builder writes classes
/// (`[\x{41}-\x{5A}\x{5F}-\x{5F}]`, see [`crate::ir::builder::class_regex`]); `None` for
/// anything else.
fn ascii_class(p: &str) -> Option<ByteSet> {
    let mut rest = p.strip_prefix('[')?.strip_suffix(']')?;
    let mut set = [0u32; 8];
    let hex = |r: &mut &str| -> Option<u32> {
        let t = r.strip_prefix("\\x{")?;
        let end = t.find('}')?;
        let v = u32::from_str_radix(t.get(..end)?, 16).ok()?;
        *r = t.get(end + 1..)?;
        Some(v)
    };
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let lo = hex(&mut rest)?;
        rest = rest.strip_prefix('-')?;
        let hi = hex(&mut rest)?;
        if lo > hi || hi > 0x7F {
            return None;
        }
        for b in lo..=hi {
            set[(b >> 5) as usize] |= 1 << (b & 31);
        }
    }
    Some(set)
}

/// The tree of `e` (shared nodes shared), if it has no `And`/`Not` and is shallow.
fn to_ast(
    exprs: &ExprSet,
    e: ExprId,
    depth: usize,
    memo: &mut HashMap<ExprId, Arc<RegexAst>>,
) -> Option<Arc<RegexAst>> {
    use crate::regex::{Node, REPEAT_INF};
    if let Some(a) = memo.get(&e) {
        return Some(Arc::clone(a));
    }
    if depth > 32 {
        return None;
    }
    let sub = |x: ExprId, memo: &mut HashMap<ExprId, Arc<RegexAst>>| {
        to_ast(exprs, x, depth + 1, memo).map(RegexAst::Shared)
    };
    let ast = match exprs.node(e) {
        Node::Nothing => RegexAst::Nothing,
        Node::Epsilon => RegexAst::Epsilon,
        Node::Byte(b) => RegexAst::Literal(vec![b]),
        Node::ByteSet(w) => {
            let mut set = [0u32; 8];
            for (o, v) in set.iter_mut().zip(w) {
                *o = *v;
            }
            RegexAst::ByteSet(set)
        }
        Node::Concat(a, b) => RegexAst::Concat(vec![sub(a, memo)?, sub(b, memo)?]),
        Node::Or(xs) => {
            let mut items = Vec::with_capacity(xs.len());
            for &x in xs {
                items.push(sub(ExprId(x), memo)?);
            }
            RegexAst::Or(items)
        }
        Node::Repeat(x, min, max) => RegexAst::Repeat(
            alloc::boxed::Box::new(sub(x, memo)?),
            min,
            (max != REPEAT_INF).then_some(max),
        ),
        Node::And(_) | Node::Not(_) => return None,
    };
    let a = Arc::new(ast);
    memo.insert(e, Arc::clone(&a));
    Some(a)
}

#[derive(Debug, Clone, Copy, Default)]
struct Flags {
    proper_prefix: bool,
    same_text: bool,
    lazy_shadow: bool,
}

enum AnalysisError {
    Limit(LimitKind),
    Regex(usize, String),
}

impl From<LimitKind> for AnalysisError {
    fn from(k: LimitKind) -> Self {
        AnalysisError::Limit(k)
    }
}

fn union(a: &mut ByteSet, b: &ByteSet) -> bool {
    let mut changed = false;
    for (x, y) in a.iter_mut().zip(b) {
        let z = *x | *y;
        changed |= z != *x;
        *x = z;
    }
    changed
}

fn intersects(a: &ByteSet, b: &ByteSet) -> bool {
    a.iter().zip(b).any(|(x, y)| x & y != 0)
}

/// The conflicts of `ir`'s used lexemes that share a first byte; with `only`, just the
/// pairs where `only` holds for one of the two; with `greedy_only`, just
/// [`ConflictKind::ProperPrefix`] (what the lexer's greedy ending can lose).
fn analyze(
    ir: &GrammarIr,
    exprs: &mut ExprSet,
    memo: &mut Memo,
    only: Option<&dyn Fn(u32) -> bool>,
    greedy_only: bool,
) -> Result<Vec<LexemeConflict>, AnalysisError> {
    analyze_pairs(ir, exprs, memo, only, greedy_only, false)
}

#[cfg(feature = "boundary-repair")]
mod boundary;
mod pairs;
#[cfg(feature = "boundary-repair")]
pub use boundary::repair_boundaries;
#[cfg(feature = "boundary-repair")]
pub(crate) use boundary::repair_compiled;
use pairs::analyze_pairs;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod class_tests;
