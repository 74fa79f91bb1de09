//! The flat rule array the parser runs on.
//!
//! Every right-hand side is stored in one `Vec<u32>`, each followed by [`END`]; a dot
//! position *is* an index into that array, so advancing an item is `+1`. Symbols are
//! nonterminal ids, or lexeme ids with [`TERMINAL`] set.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::error::{GrammarError, GrammarErrorKind, LimitKind};
use crate::ir::{GrammarIr, IrSymbol};
use crate::limits::Limits;

/// Marks a lexeme symbol.
pub const TERMINAL: u32 = 1 << 31;
/// Ends each right-hand side.
pub const END: u32 = u32::MAX;

/// The compiled, flat context-free rules.
#[derive(Debug, Clone)]
pub struct Rules {
    /// All right-hand sides, each followed by [`END`].
    pub rhs: Vec<u32>,
    /// For each position in `rhs`, the left-hand side of its rule.
    pub lhs_at: Vec<u32>,
    /// Rules of nonterminal `n` start at `by_lhs[by_lhs_start[n]..by_lhs_start[n + 1]]`.
    pub by_lhs_start: Vec<u32>,
    /// Start positions in `rhs`, grouped by left-hand side.
    pub by_lhs: Vec<u32>,
    /// Nullable nonterminals.
    pub nullable: Vec<bool>,
    /// The augmented start symbol `S' → S`.
    pub start: u32,
    /// The dot position of the completed `S' → S •`.
    pub accept_dot: u32,
    /// Nonterminal names (the augmented start last).
    pub names: Vec<String>,
}

impl Rules {
    /// Flatten `ir`, dropping rules that use unproductive symbols. `productive_lexeme[l]`
    /// says whether lexeme `l` matches anything.
    pub fn build(
        ir: &GrammarIr,
        productive_lexeme: &[bool],
        limits: &Limits,
    ) -> Result<Rules, GrammarError> {
        let n = ir.nonterminals.len();
        let size: usize = ir.rules.iter().map(|r| r.rhs.len() + 1).sum();
        if size + ir.lexemes.len() > limits.max_grammar_size || n >= (TERMINAL as usize) - 1 {
            return Err(GrammarError::limit(LimitKind::GrammarSize));
        }
        if ir.start as usize >= n {
            return Err(GrammarError::new(
                GrammarErrorKind::UndefinedSymbol,
                "start symbol is not defined",
            ));
        }
        let sym_ok = |s: &IrSymbol, prod: &[bool]| match *s {
            IrSymbol::Nonterminal(x) => prod.get(x as usize).copied().unwrap_or(false),
            IrSymbol::Lexeme(l) => productive_lexeme.get(l as usize).copied().unwrap_or(false),
        };
        // Both fixpoints are work lists over the reverse dependencies: linear in the rules.
        let uses = Uses::new(ir, n);
        let productive = uses.fixpoint(ir, n, |l| {
            productive_lexeme.get(l as usize).copied().unwrap_or(false)
        });
        if !productive[ir.start as usize] {
            let mut err = GrammarError::new(
                GrammarErrorKind::Unproductive,
                alloc::format!(
                    "rule `{}` cannot derive any finite string",
                    ir.nonterminals[ir.start as usize].name
                ),
            );
            err.span = ir.nonterminals[ir.start as usize].span;
            return Err(err);
        }
        // Nullable: rules without lexemes whose nonterminals are all nullable.
        let mut nullable = uses.fixpoint(ir, n, |_| false);
        nullable.push(false);
        let start = n as u32;
        nullable[n] = nullable[ir.start as usize];
        // Group rules by lhs; the augmented start rule comes last.
        let mut order: Vec<(u32, Vec<u32>)> = Vec::with_capacity(ir.rules.len() + 1);
        for r in &ir.rules {
            if (r.lhs as usize) < n && r.rhs.iter().all(|s| sym_ok(s, &productive)) {
                let rhs = r
                    .rhs
                    .iter()
                    .map(|s| match *s {
                        IrSymbol::Nonterminal(x) => x,
                        IrSymbol::Lexeme(l) => l | TERMINAL,
                    })
                    .collect();
                order.push((r.lhs, rhs));
            }
        }
        order.push((start, vec![ir.start]));
        order.sort_by_key(|(lhs, _)| *lhs);
        let mut rhs = Vec::with_capacity(size + 2);
        let mut lhs_at = Vec::with_capacity(size + 2);
        let mut by_lhs = Vec::with_capacity(order.len());
        let mut by_lhs_start = vec![0u32; n + 2];
        let mut accept_dot = 0;
        for (lhs, body) in &order {
            by_lhs_start[*lhs as usize + 1] += 1;
            by_lhs.push(rhs.len() as u32);
            for &s in body {
                rhs.push(s);
                lhs_at.push(*lhs);
            }
            if *lhs == start {
                accept_dot = rhs.len() as u32;
            }
            rhs.push(END);
            lhs_at.push(*lhs);
        }
        for i in 1..by_lhs_start.len() {
            by_lhs_start[i] += by_lhs_start[i - 1];
        }
        let mut names: Vec<String> = ir.nonterminals.iter().map(|x| x.name.clone()).collect();
        names.push(String::from("start'"));
        Ok(Rules {
            rhs,
            lhs_at,
            by_lhs_start,
            by_lhs,
            nullable,
            start,
            accept_dot,
            names,
        })
    }

    /// The start positions of the rules of nonterminal `n`.
    #[inline]
    pub fn rules_of(&self, n: u32) -> &[u32] {
        let a = self.by_lhs_start.get(n as usize).copied().unwrap_or(0) as usize;
        let b = self.by_lhs_start.get(n as usize + 1).copied().unwrap_or(0) as usize;
        self.by_lhs.get(a..b).unwrap_or(&[])
    }

    /// Heap bytes held, buffers by capacity, the nonterminal names included.
    pub fn bytes_used(&self) -> usize {
        use crate::lexer::vec_bytes;
        vec_bytes(&self.rhs)
            + vec_bytes(&self.lhs_at)
            + vec_bytes(&self.by_lhs)
            + vec_bytes(&self.by_lhs_start)
            + vec_bytes(&self.nullable)
            + vec_bytes(&self.names)
            + self.names.iter().map(String::capacity).sum::<usize>()
    }
}

/// For each nonterminal, the rules whose right-hand side uses it (one entry per use), in
/// compressed rows: the uses of `x` are `rules[start[x]..start[x + 1]]`.
struct Uses {
    start: Vec<u32>,
    rules: Vec<u32>,
}

impl Uses {
    fn new(ir: &GrammarIr, n: usize) -> Uses {
        let mut start = vec![0u32; n + 1];
        for r in &ir.rules {
            for s in &r.rhs {
                if let IrSymbol::Nonterminal(x) = *s
                    && let Some(c) = start.get_mut(x as usize + 1)
                {
                    *c += 1;
                }
            }
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut fill = start.clone();
        let mut rules = vec![0u32; start.last().copied().unwrap_or(0) as usize];
        for (ri, r) in ir.rules.iter().enumerate() {
            for s in &r.rhs {
                if let IrSymbol::Nonterminal(x) = *s
                    && let Some(at) = fill.get_mut(x as usize)
                {
                    if let Some(slot) = rules.get_mut(*at as usize) {
                        *slot = ri as u32;
                    }
                    *at += 1;
                }
            }
        }
        Uses { start, rules }
    }

    /// The least set of nonterminals such that a rule whose lexemes all satisfy
    /// `lexeme_ok` and whose nonterminals are all in the set puts its left-hand side in the
    /// set (productivity, nullability). A work list: each use is visited once.
    fn fixpoint(&self, ir: &GrammarIr, n: usize, lexeme_ok: impl Fn(u32) -> bool) -> Vec<bool> {
        const DEAD: u32 = u32::MAX;
        let mut done = vec![false; n];
        let mut work: Vec<u32> = Vec::new();
        // Uses of nonterminals not yet in the set, per rule.
        let mut waiting: Vec<u32> = Vec::with_capacity(ir.rules.len());
        for r in &ir.rules {
            let mut count = 0u32;
            for s in &r.rhs {
                match *s {
                    IrSymbol::Nonterminal(x) if (x as usize) < n => count += 1,
                    IrSymbol::Lexeme(l) if lexeme_ok(l) => {}
                    _ => count = DEAD,
                }
                if count == DEAD {
                    break;
                }
            }
            if (r.lhs as usize) >= n {
                count = DEAD;
            }
            waiting.push(count);
            if count == 0
                && let Some(d) = done.get_mut(r.lhs as usize)
                && !*d
            {
                *d = true;
                work.push(r.lhs);
            }
        }
        while let Some(x) = work.pop() {
            let a = self.start.get(x as usize).copied().unwrap_or(0) as usize;
            let b = self.start.get(x as usize + 1).copied().unwrap_or(0) as usize;
            for &ri in self.rules.get(a..b).unwrap_or(&[]) {
                let Some(w) = waiting.get_mut(ri as usize) else {
                    continue;
                };
                if *w == DEAD || *w == 0 {
                    continue;
                }
                *w -= 1;
                if *w == 0
                    && let Some(r) = ir.rules.get(ri as usize)
                    && let Some(d) = done.get_mut(r.lhs as usize)
                    && !*d
                {
                    *d = true;
                    work.push(r.lhs);
                }
            }
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{IrLexeme, LexemeMode};
    use crate::regex::RegexAst;

    fn ir(n: usize, rules: &[(u32, &[IrSymbol])]) -> GrammarIr {
        let mut ir = GrammarIr::default();
        for i in 0..n {
            ir.add_nonterminal(alloc::format!("n{i}"), None);
        }
        ir.add_lexeme(IrLexeme {
            name: "x".into(),
            regex: RegexAst::literal("x"),
            mode: LexemeMode::Greedy,
            ignore: false,
            span: None,
        });
        for (lhs, rhs) in rules {
            ir.add_rule(*lhs, rhs.to_vec());
        }
        ir
    }

    #[test]
    fn productive_and_nullable_fixpoints() {
        use IrSymbol::{Lexeme as L, Nonterminal as N};
        // 0 start: 1 | 5; 1 A: 2 3; 2 B: ε; 3 C: 2 2; 4 D: 4 x; 5 E: 1 4; 6 F: x | 6 6;
        // 7 G: 6 x 2 (productive, not nullable); 8 H: 9 (lexeme 1 does not exist) ...
        let g = ir(
            9,
            &[
                (0, &[N(1)]),
                (0, &[N(5)]),
                (1, &[N(2), N(3)]),
                (2, &[]),
                (3, &[N(2), N(2)]),
                (4, &[N(4), L(0)]),
                (5, &[N(1), N(4)]),
                (6, &[L(0)]),
                (6, &[N(6), N(6)]),
                (7, &[N(6), L(0), N(2)]),
                (8, &[L(1)]),
            ],
        );
        let r = Rules::build(&g, &[true], &Limits::default()).unwrap();
        let nullable: Vec<usize> = (0..9).filter(|&i| r.nullable[i]).collect();
        assert_eq!(nullable, [0, 1, 2, 3]);
        assert!(r.nullable[9], "the augmented start follows start");
        // Rules using unproductive 4, 5 and 8 are dropped; 6 and 7 keep theirs.
        assert!(r.rules_of(4).is_empty() && r.rules_of(5).is_empty());
        assert!(r.rules_of(8).is_empty());
        assert_eq!(r.rules_of(0).len(), 1);
        assert_eq!(r.rules_of(6).len(), 2);
        assert_eq!(r.rules_of(7).len(), 1);
        // An unproductive start is an error.
        let g = ir(2, &[(0, &[N(1)]), (1, &[N(1), L(0)])]);
        let e = Rules::build(&g, &[true], &Limits::default()).unwrap_err();
        assert_eq!(e.kind, GrammarErrorKind::Unproductive);
    }

    #[test]
    fn long_chains_are_linear() {
        // n_i: n_{i+1} in source order, the last one ε: each pass of a naive fixpoint
        // settles one rule (10^10 steps); the work lists settle them all in one sweep.
        let n = 100_000u32;
        let rules: Vec<(u32, Vec<IrSymbol>)> = (0..n)
            .map(|i| {
                let rhs = if i + 1 < n {
                    alloc::vec![IrSymbol::Nonterminal(i + 1)]
                } else {
                    Vec::new()
                };
                (i, rhs)
            })
            .collect();
        let refs: Vec<(u32, &[IrSymbol])> = rules.iter().map(|(l, r)| (*l, r.as_slice())).collect();
        let g = ir(n as usize, &refs);
        let r = Rules::build(&g, &[true], &Limits::default()).unwrap();
        assert!(r.nullable.iter().all(|&b| b));
        assert_eq!(r.rules_of(0).len(), 1);
    }
}
