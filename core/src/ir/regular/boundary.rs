//! Lexeme boundaries (issue 38): where a greedy lexeme can read on into the lexeme after
//! it, fuse the two into one lexeme when the rule around them is regular.
//!
//! The lexer ends a greedy lexeme only when the next byte extends no live lexeme. In
//! `start: "BEG" NUM "END"` with `NUM: /[0-9]+(E[0-9]+)?/`, after `BEG12345` the byte `E`
//! still extends `NUM` (an exponent), so the lexer reads it as part of `NUM`; `N` then kills
//! `NUM` and `BEG12345END`, a string of the grammar, is refused. [`analyze`] finds such a
//! pair as a [`ConflictKind::ProperPrefix`] conflict of `NUM` (a string of `NUM`, then a
//! byte that may follow `NUM`, is a prefix of a string of a lexeme the parser may allow at
//! that point).
//!
//! [`repair_boundaries`] makes the smallest regular rules in which such a lexeme is followed
//! by something one lexeme each (the rule `"BEG" NUM "END"` above becomes the lexeme
//! `BEG[0-9]+(E[0-9]+)?END`), by the same candidate-and-check loop as
//! [`super::lexify`]: a rule becomes a lexeme only if the new lexeme is in no conflict
//! itself, so the language and every prefix's viability are kept exactly, and the lexer's
//! derivatives decide the boundary inside the fused lexeme. A rule whose lexeme would
//! conflict stays a rule; what is left is reported by the analysis (`sieve grammar-info`).
//!
//! Which rules are tried: those the regular-rule pass may turn into a lexeme (regular,
//! every lexeme in them plain) in whose productions a symbol that can end with a conflicting
//! lexeme is followed by another symbol. The outermost such rules reachable from the start
//! are fused; nothing else changes, so a grammar without a conflict is returned as it came
//! (the cost is the conflict analysis, paid from the compile budget).
//!
//! Not repaired: a grammar with an ignored lexeme (it may come between any two lexemes, and
//! one lexeme in their place would refuse it there), and a conflict whose follower comes
//! after a recursive rule (the region is not regular).

use super::{
    Compiled, ConflictKind, IrNonterminal, Known, Memo, Regular, analyze, analyze_pairs,
    build_regexes, candidate, regular_nonterminals, rules_by_lhs,
};
use crate::error::GrammarError;
use crate::ir::{GrammarIr, IrLexeme, IrSymbol, LexemeMode};
use crate::limits::{CompileBudget, Limits};
use crate::regex::ExprSet;
use crate::regex::RegexAst;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// Most lexemes of a grammar whose boundaries are checked: the check costs about 10-40 µs a
/// lexeme on this project's machines (compiling it, its first bytes, its check against
/// itself), and a front end's large grammars (JSON Schema contents of tool lists: keys,
/// strings, punctuation) close every lexeme with a delimiter. Larger grammars are compiled
/// as they are; `sieve grammar-info` reports their conflicts.
pub const MAX_LEXEMES: usize = 32;

/// Fuse the regular rules around each lexeme that a greedy lexer can read past (see the
/// module documentation); `ir` unchanged where there is none, where no such rule is
/// regular, or when the analysis runs out of its caps (half the compile budget's fuel).
///
/// # Errors
/// [`crate::error::LimitKind::Memory`] when the fused grammar does not fit the budget.
pub fn repair_boundaries(
    ir: GrammarIr,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<GrammarIr, GrammarError> {
    repair_compiled(ir, limits, budget).map(|(ir, _)| ir)
}

/// [`repair_boundaries`], and the expressions its analysis compiled, for the grammar build
/// to reuse (as [`super::lexify_compiled`]).
pub(crate) fn repair_compiled(
    ir: GrammarIr,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<(GrammarIr, Option<Compiled>), GrammarError> {
    if ir.lexemes.iter().any(|l| l.ignore) || ir.lexemes.len() > MAX_LEXEMES {
        return Ok((ir, None));
    }
    let fuel = budget.left() / 2;
    let mut exprs = ExprSet::new(limits);
    exprs.set_fuel(fuel);
    exprs.set_weight(crate::regex::COMPILE_REGEX_WEIGHT);
    exprs.max_memory = limits.max_memory_bytes / 3;
    let mut memo = Memo {
        loose_first: true,
        ..Memo::default()
    };
    let first = read_past(&ir, &mut exprs, &mut memo);
    let fused = if first.contains(&true) {
        fuse_rules(ir, &first, limits, budget, &mut exprs, &mut memo)
    } else {
        Ok(ir)
    };
    // Then, inside the rules that stay (recursive ones), the runs of regular symbols around
    // each lexeme still read past.
    let runs = match &fused {
        Ok(out) if first.contains(&true) => {
            fuse_runs_rounds(out, limits, budget, &mut exprs, &mut memo)
        }
        _ => Ok(None),
    };
    budget.settle(budget.left().saturating_sub(fuel - exprs.fuel_left()));
    let out = match runs? {
        Some(out) => out,
        None => fused?,
    };
    if first.contains(&true) {
        budget
            .charge(out.heap_bytes())
            .map_err(GrammarError::limit)?;
    }
    let compiled = Compiled {
        exprs,
        known: Known(memo.compiled),
    };
    Ok((out, Some(compiled)))
}

/// `ir` with the outermost regular rules around each lexeme of `read_past` fused
/// ([`fuse_around`]); `ir` itself when none is.
fn fuse_rules(
    mut ir: GrammarIr,
    read_past: &[bool],
    limits: &Limits,
    budget: &mut CompileBudget,
    exprs: &mut ExprSet,
    memo: &mut Memo,
) -> Result<GrammarIr, GrammarError> {
    let regular = regular_nonterminals(&ir);
    let none = vec![false; ir.nonterminals.len()];
    if !followed_ends(&ir, &regular, read_past, &none).contains(&true) {
        return Ok(ir);
    }
    let regexes = build_regexes(&ir, &regular.order, limits.max_repeat, budget)
        .map_err(GrammarError::limit)?;
    // As in `lexify`: the candidates copy the nonterminals without their names.
    let nameless = ir
        .nonterminals
        .iter()
        .map(|n| IrNonterminal {
            name: String::new(),
            span: n.span,
        })
        .collect();
    let named = core::mem::replace(&mut ir.nonterminals, nameless);
    let fused = fuse_around(&ir, &named, &regular, read_past, &regexes, exprs, memo);
    let mut out = fused.unwrap_or(ir);
    out.nonterminals = named;
    Ok(out)
}

/// The lexemes a greedy lexer can read past into what follows them: a string of the lexeme,
/// then a byte that may follow it in the grammar, is a prefix of a string of the same lexeme
/// ([`ConflictKind::ProperPrefix`] with itself); none when the analysis runs out of its caps.
///
/// Only self-conflicts start a repair: they are what abutting lexemes with overlapping
/// continuations give (`NUM` then `END`, `x+` then `xy`), and checking each lexeme against
/// itself costs one pair check a lexeme, where all pairs cost a check per pair of lexemes
/// with a common first byte (every JSON string and key). A conflict between two different
/// lexemes is left to the fused candidates' check and to the analysis' report.
fn read_past(ir: &GrammarIr, exprs: &mut ExprSet, memo: &mut Memo) -> Vec<bool> {
    let mut read_past = vec![false; ir.lexemes.len()];
    for c in analyze_pairs(ir, exprs, memo, None, true, true).unwrap_or_default() {
        if c.kind == ConflictKind::ProperPrefix
            && let Some(r) = read_past.get_mut(c.first as usize)
        {
            *r = true;
        }
    }
    read_past
}

/// The fused grammar: the outermost rules of [`followed_ends`] reachable from the start
/// become lexemes; a rule whose lexeme is in a conflict stays a rule and counts as ending
/// in a lexeme read past, so that the rules around it are tried next, to a fixpoint (each
/// round rejects one rule more). `None` when no rule is left to try, or the analysis runs
/// out of its caps.
fn fuse_around(
    ir: &GrammarIr,
    named: &[IrNonterminal],
    regular: &Regular,
    read_past: &[bool],
    regexes: &[Option<alloc::sync::Arc<crate::regex::RegexAst>>],
    exprs: &mut ExprSet,
    memo: &mut Memo,
) -> Option<GrammarIr> {
    let n = ir.nonterminals.len();
    let mut failed = vec![false; n];
    loop {
        let eligible = followed_ends(ir, regular, read_past, &failed);
        let rejected: Vec<bool> = (0..n).map(|i| !eligible[i] || failed[i]).collect();
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
            for l in [c.first, c.second] {
                if let Some(nt) = origin.get(l as usize).copied().flatten() {
                    failed[nt as usize] = true;
                }
            }
        }
    }
}

/// Which nonterminals can end with a lexeme of `read_past` (or are in `failed`), and the
/// rules by left-hand side.
fn ends_in(ir: &GrammarIr, read_past: &[bool], failed: &[bool]) -> (Vec<bool>, super::ByLhs) {
    let n = ir.nonterminals.len();
    let by = rules_by_lhs(ir);
    // Nullable nonterminals, lexemes taken as never empty (only which rules are tried
    // depends on it).
    let mut nullable = vec![false; n];
    let mut ends = failed.to_vec();
    loop {
        let mut changed = false;
        for r in &ir.rules {
            let a = r.lhs as usize;
            if !nullable[a]
                && r.rhs.iter().all(|s| match *s {
                    IrSymbol::Lexeme(_) => false,
                    IrSymbol::Nonterminal(m) => nullable[m as usize],
                })
            {
                nullable[a] = true;
                changed = true;
            }
            if !ends[a] {
                for s in r.rhs.iter().rev() {
                    let (hit, empty) = match *s {
                        IrSymbol::Lexeme(l) => (read_past[l as usize], false),
                        IrSymbol::Nonterminal(m) => (ends[m as usize], nullable[m as usize]),
                    };
                    if hit {
                        ends[a] = true;
                        changed = true;
                        break;
                    }
                    if !empty {
                        break;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    (ends, by)
}

/// The regular nonterminals with a production in which a symbol that can end with a lexeme
/// of `read_past` (or with a nonterminal of `failed`) has another symbol after it.
fn followed_ends(
    ir: &GrammarIr,
    regular: &Regular,
    read_past: &[bool],
    failed: &[bool],
) -> Vec<bool> {
    let n = ir.nonterminals.len();
    let (ends, by) = ends_in(ir, read_past, failed);
    let ends_with = |s: &IrSymbol| match *s {
        IrSymbol::Lexeme(l) => read_past[l as usize],
        IrSymbol::Nonterminal(m) => ends[m as usize],
    };
    (0..n)
        .map(|nt| {
            regular.is_regular[nt]
                && by[nt].iter().any(|&ri| {
                    let rhs = &ir.rules[ri].rhs;
                    rhs.split_last()
                        .is_some_and(|(_, init)| init.iter().any(ends_with))
                })
        })
        .collect()
}

/// Rounds of [`fuse_runs`]: each may expose a boundary the previous one moved.
const RUN_ROUNDS: usize = 3;

/// [`fuse_runs`] while lexemes are read past, at most [`RUN_ROUNDS`] times; `None` when
/// nothing is fused.
fn fuse_runs_rounds(
    ir: &GrammarIr,
    limits: &Limits,
    budget: &mut CompileBudget,
    exprs: &mut ExprSet,
    memo: &mut Memo,
) -> Result<Option<GrammarIr>, GrammarError> {
    let mut out: Option<GrammarIr> = None;
    for _ in 0..RUN_ROUNDS {
        let cur = out.as_ref().unwrap_or(ir);
        let left = read_past(cur, exprs, memo);
        if !left.contains(&true) {
            break;
        }
        match fuse_runs(cur, &left, limits, budget, exprs, memo)? {
            Some(next) => out = Some(next),
            None => break,
        }
    }
    Ok(out)
}

/// Most rules [`distribute`] adds to a grammar.
const MAX_DISTRIBUTED_RULES: usize = 256;

/// `ir` in which, where a symbol that can end with a lexeme of `read_past` meets the symbol
/// after it and one of the two is a nonterminal that is not regular (so that no run of
/// regular symbols can hold both), that nonterminal is replaced by its productions, one
/// production of the rule each (`α g β` with `g → γ₁ | γ₂` becomes `α γ₁ β | α γ₂ β`): the
/// same language, and the boundary now lies inside each production, where a run can hold it.
/// One replacement a rule, at most [`MAX_DISTRIBUTED_RULES`] new rules; `None` if none.
fn distribute(
    ir: &GrammarIr,
    read_past: &[bool],
    budget: &mut CompileBudget,
) -> Result<Option<GrammarIr>, GrammarError> {
    let regular = regular_nonterminals(ir);
    let none = vec![false; ir.nonterminals.len()];
    let (ends, by) = ends_in(ir, read_past, &none);
    let ends_with = |s: &IrSymbol| match *s {
        IrSymbol::Lexeme(l) => read_past[l as usize],
        IrSymbol::Nonterminal(m) => ends[m as usize],
    };
    let irregular = |s: &IrSymbol, lhs: u32| match *s {
        IrSymbol::Nonterminal(m) => m != lhs && !regular.is_regular[m as usize],
        IrSymbol::Lexeme(_) => false,
    };
    let mut out: Option<GrammarIr> = None;
    let mut added = 0usize;
    for (ri, r) in ir.rules.iter().enumerate() {
        let rhs = &r.rhs;
        let at = (0..rhs.len().saturating_sub(1)).find_map(|i| {
            if !ends_with(&rhs[i]) {
                return None;
            }
            if irregular(&rhs[i], r.lhs) {
                Some(i)
            } else if irregular(&rhs[i + 1], r.lhs) {
                Some(i + 1)
            } else {
                None
            }
        });
        let Some(at) = at else { continue };
        let IrSymbol::Nonterminal(g) = rhs[at] else {
            continue;
        };
        let alts = &by[g as usize];
        if added + alts.len() > MAX_DISTRIBUTED_RULES {
            continue;
        }
        let cand = match &mut out {
            Some(c) => c,
            None => {
                budget
                    .charge(ir.heap_bytes())
                    .map_err(GrammarError::limit)?;
                out.insert(ir.clone())
            }
        };
        for (k, &gi) in alts.iter().enumerate() {
            let mut new = Vec::with_capacity(rhs.len() + ir.rules[gi].rhs.len());
            new.extend_from_slice(&rhs[..at]);
            new.extend_from_slice(&ir.rules[gi].rhs);
            new.extend_from_slice(&rhs[at + 1..]);
            budget
                .charge(new.len() * core::mem::size_of::<IrSymbol>())
                .map_err(GrammarError::limit)?;
            if k == 0 {
                cand.rules[ri].rhs = new;
            } else {
                cand.add_rule(r.lhs, new);
                added += 1;
            }
        }
    }
    Ok(out)
}

/// A run of symbols of one production to fuse: `(rule, start, end)`.
type Run = (usize, usize, usize);

/// The grammar in which each maximal run of regular symbols (plain lexemes, regular
/// nonterminals) of a production, around a symbol that can end with a lexeme of
/// `read_past` and the symbol after it, is one lexeme; a run whose lexeme is in a conflict
/// is left as it was, to a fixpoint. `None` when no run is fused.
fn fuse_runs(
    ir: &GrammarIr,
    read_past: &[bool],
    limits: &Limits,
    budget: &mut CompileBudget,
    exprs: &mut ExprSet,
    memo: &mut Memo,
) -> Result<Option<GrammarIr>, GrammarError> {
    let distributed = distribute(ir, read_past, budget)?;
    let ir = distributed.as_ref().unwrap_or(ir);
    let regular = regular_nonterminals(ir);
    let regexes = build_regexes(ir, &regular.order, limits.max_repeat, budget)
        .map_err(GrammarError::limit)?;
    let none = vec![false; ir.nonterminals.len()];
    let (ends, _) = ends_in(ir, read_past, &none);
    let fusable = |s: &IrSymbol| match *s {
        IrSymbol::Lexeme(l) => ir.lexemes.get(l as usize).is_some_and(super::is_plain),
        IrSymbol::Nonterminal(m) => regexes.get(m as usize).is_some_and(Option::is_some),
    };
    let ends_with = |s: &IrSymbol| match *s {
        IrSymbol::Lexeme(l) => read_past[l as usize],
        IrSymbol::Nonterminal(m) => ends[m as usize],
    };
    let mut runs: Vec<Run> = Vec::new();
    for (ri, r) in ir.rules.iter().enumerate() {
        let rhs = &r.rhs;
        let mut i = 0;
        while i + 1 < rhs.len() {
            if ends_with(&rhs[i]) && fusable(&rhs[i]) && fusable(&rhs[i + 1]) {
                let mut a = i;
                while a > 0 && fusable(&rhs[a - 1]) {
                    a -= 1;
                }
                let mut b = i + 2;
                while b < rhs.len() && fusable(&rhs[b]) {
                    b += 1;
                }
                runs.push((ri, a, b));
                i = b;
            } else {
                i += 1;
            }
        }
    }
    let mut dropped = vec![false; runs.len()];
    loop {
        if dropped.iter().all(|&d| d) {
            return Ok(None);
        }
        let (cand, new_of) = with_runs(ir, &runs, &dropped, &regexes, budget)?;
        let new = |l: u32| new_of.iter().any(|&(x, _)| x == l);
        let Ok(conflicts) = analyze(&cand, exprs, memo, Some(&new), true) else {
            return Ok(None);
        };
        if conflicts.is_empty() {
            return Ok(Some(cand));
        }
        for c in conflicts {
            for l in [c.first, c.second] {
                if let Some(&(_, k)) = new_of.iter().find(|x| x.0 == l) {
                    dropped[k] = true;
                }
            }
        }
    }
}

/// `ir` with each run not `dropped` replaced by a new lexeme; the new lexemes and their runs'
/// indices.
fn with_runs(
    ir: &GrammarIr,
    runs: &[Run],
    dropped: &[bool],
    regexes: &[Option<alloc::sync::Arc<RegexAst>>],
    budget: &mut CompileBudget,
) -> Result<(GrammarIr, Vec<(u32, usize)>), GrammarError> {
    budget
        .charge(ir.heap_bytes())
        .map_err(GrammarError::limit)?;
    let mut cand = ir.clone();
    let mut new_of = Vec::new();
    // Later runs of a rule first, so that the earlier ones' positions hold.
    for (k, &(ri, a, b)) in runs.iter().enumerate().rev() {
        if dropped[k] {
            continue;
        }
        let syms = &ir.rules[ri].rhs[a..b];
        let mut name = String::new();
        let mut parts = Vec::with_capacity(syms.len());
        for s in syms {
            let (n, r) = match *s {
                IrSymbol::Lexeme(l) => {
                    let lex = &ir.lexemes[l as usize];
                    (lex.name.as_str(), lex.regex.clone())
                }
                IrSymbol::Nonterminal(m) => (
                    ir.nonterminals[m as usize].name.as_str(),
                    match &regexes[m as usize] {
                        Some(x) => RegexAst::Shared(alloc::sync::Arc::clone(x)),
                        None => RegexAst::Nothing,
                    },
                ),
            };
            if !name.is_empty() {
                name.push(' ');
            }
            name.push_str(n);
            parts.push(r);
        }
        let span = syms.iter().find_map(|s| match *s {
            IrSymbol::Lexeme(l) => ir.lexemes[l as usize].span,
            IrSymbol::Nonterminal(m) => ir.nonterminals[m as usize].span,
        });
        let l = cand.add_lexeme(IrLexeme {
            name,
            regex: RegexAst::Concat(parts),
            mode: LexemeMode::Greedy,
            ignore: false,
            span,
        });
        cand.rules[ri].rhs.splice(a..b, [IrSymbol::Lexeme(l)]);
        new_of.push((l, k));
    }
    Ok((cand, new_of))
}

#[cfg(test)]
mod tests {
    //! The shapes of issue 38 in Lark and GBNF: a greedy lexeme followed by text it can read
    //! into. Strings of the grammar are pushed byte by byte and whole; the analysis reports
    //! what is left.
    use alloc::sync::Arc;

    use super::*;
    use crate::grammar::gbnf::GbnfOptions;
    use crate::ir::regular::lexeme_conflicts;
    use crate::{Grammar, Matcher, Vocabulary};

    fn vocab() -> Arc<Vocabulary> {
        Arc::new(Vocabulary::synthetic(300, 7))
    }

    fn lark(src: &str) -> Grammar {
        Grammar::from_lark(src, &vocab(), &Limits::default()).unwrap()
    }

    /// Whether `g` accepts `s` pushed whole, and byte by byte.
    fn accepts(g: &Grammar, s: &str) -> bool {
        let mut whole = Matcher::new(g);
        let a = whole.try_consume_bytes(s.as_bytes()) && whole.is_accepting();
        let mut m = Matcher::new(g);
        let b = s.bytes().all(|c| m.try_consume_bytes(&[c])) && m.is_accepting();
        assert_eq!(a, b, "{s:?}: whole {a}, byte by byte {b}");
        a
    }

    /// The IR of a Lark grammar as its front end lowers it (before the repair).
    fn lark_ir(src: &str, limits: &Limits, budget: &mut CompileBudget) -> GrammarIr {
        let v = vocab();
        let ctx = crate::grammar::lark::Context {
            specials: v.as_ref(),
            json: &Default::default(),
            grammars: &crate::grammar::lark::NoSubGrammars,
        };
        crate::grammar::lark::parse_in(src, &ctx, limits, budget).unwrap()
    }

    fn conflicts_after_repair(src: &str) -> usize {
        let limits = Limits::default();
        let mut budget = CompileBudget::new(&limits);
        let ir = lark_ir(src, &limits, &mut budget);
        let ir = repair_boundaries(ir, &limits, &mut budget).unwrap();
        lexeme_conflicts(&ir, &limits, &mut budget)
            .unwrap()
            .iter()
            .filter(|c| c.kind == ConflictKind::ProperPrefix)
            .count()
    }

    const NUM: &str = "NUM: /[0-9]+(E[0-9]+)?/\n";

    #[test]
    fn number_then_end_in_lark() {
        let g = lark(&alloc::format!("start: \"BEG\" NUM \"END\"\n{NUM}"));
        for s in ["BEG12345END", "BEG1E5END", "BEG0END"] {
            assert!(accepts(&g, s), "{s}");
        }
        for s in ["BEG1EEND", "BEGEND", "BEG1E5", "BEG12345EN"] {
            assert!(!accepts(&g, s), "{s}");
        }
        assert_eq!(
            conflicts_after_repair(&alloc::format!("start: \"BEG\" NUM \"END\"\n{NUM}")),
            0
        );
    }

    #[test]
    fn repeats_and_optionals_in_lark() {
        let g = lark(&alloc::format!(
            "start: (\"<\" NUM \"END\")+ (NUM \"E1\")? \"!\"\n{NUM}"
        ));
        for s in ["<1END!", "<1E2END<3END!", "<5END5E1!", "<5END5E1E1!"] {
            assert!(accepts(&g, s), "{s}");
        }
        assert!(!accepts(&g, "<5END5E!"));
        // Within a repetition of the lexeme itself: `NUM "E"` then `NUM` again.
        let g = lark(&alloc::format!("start: (NUM \"E\")~2..3\n{NUM}"));
        for s in ["1E2E", "1E2E3E", "1E2E3E"] {
            assert!(accepts(&g, s), "{s}");
        }
    }

    #[test]
    fn a_regular_rule_inside_recursion_is_fused() {
        let src = alloc::format!("start: \"(\" start \")\" | val\nval: NUM \"END\"\n{NUM}");
        let g = lark(&src);
        for s in ["12345END", "((1E5END))", "(7END)"] {
            assert!(accepts(&g, s), "{s}");
        }
        assert_eq!(conflicts_after_repair(&src), 0);
    }

    #[test]
    fn a_follower_past_recursion_is_distributed() {
        // `NUM` ends the recursive `x`, and `END` follows `x`: `x "END"` becomes
        // `"(" x ")" "END" | NUM "END"`, and the run `NUM "END"` one lexeme.
        let src = alloc::format!("start: x \"END\"\nx: \"(\" x \")\" | NUM\n{NUM}");
        assert_eq!(conflicts_after_repair(&src), 0);
        let g = lark(&src);
        for s in ["(1)END", "1END", "1E5END", "((2))END"] {
            assert!(accepts(&g, s), "{s}");
        }
    }

    #[test]
    fn what_is_not_repaired_is_reported() {
        // `NUM` ends `y` inside `x`'s recursion, three rules away from `END`.
        let src = alloc::format!(
            "start: x \"END\"\nx: \"(\" x \")\" | y\ny: \"[\" x \"]\" | z\nz: \"<\" y \">\" | NUM\n{NUM}"
        );
        let g = lark(&src);
        if !accepts(&g, "1END") {
            assert!(conflicts_after_repair(&src) > 0, "lost and not reported");
        }
        assert!(accepts(&g, "(1)END"));
    }

    #[test]
    fn ignored_lexemes_leave_the_grammar_as_it_is() {
        let src = alloc::format!("start: \"BEG\" NUM \"END\"\n{NUM}%ignore \" \"\n");
        assert!(conflicts_after_repair(&src) > 0);
        let g = lark(&src);
        assert!(accepts(&g, "BEG 1 END"));
    }

    #[test]
    fn number_then_end_in_gbnf() {
        // GBNF goes through `lexify`, whose candidates are checked the same way.
        let src = "root ::= \"BEG\" num \"END\"\nnum ::= [0-9]+ (\"E\" [0-9]+)?\n";
        let g =
            Grammar::from_gbnf(src, &GbnfOptions::default(), &vocab(), &Limits::default()).unwrap();
        for s in ["BEG12345END", "BEG1E5END"] {
            assert!(accepts(&g, s), "{s}");
        }
        assert!(!accepts(&g, "BEG1EEND"));
    }

    #[test]
    fn a_grammar_without_conflicts_is_unchanged() {
        let limits = Limits::default();
        let mut budget = CompileBudget::new(&limits);
        let src = "start: \"[\" NUM (\",\" NUM)* \"]\"\nNUM: /[0-9]+/\n";
        let ir = lark_ir(src, &limits, &mut budget);
        let before = (ir.lexemes.len(), ir.rules.len());
        let ir = repair_boundaries(ir, &limits, &mut budget).unwrap();
        assert_eq!((ir.lexemes.len(), ir.rules.len()), before);
    }
}
