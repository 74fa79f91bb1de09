//! The flat rule array the parser runs on.
//!
//! Every right-hand side is stored in one `Vec<u32>`, each followed by [`END`]; a dot
//! position *is* an index into that array, so advancing an item is `+1`. Symbols are
//! nonterminal ids, or lexeme ids with [`TERMINAL`] set.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::error::{GrammarError, GrammarErrorKind, LimitKind};
use crate::grammar::ir::{GrammarIr, IrSymbol};
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
        // Productivity fixpoint.
        let mut productive = vec![false; n];
        loop {
            let mut changed = false;
            for r in &ir.rules {
                let lhs = r.lhs as usize;
                if lhs < n && !productive[lhs] && r.rhs.iter().all(|s| sym_ok(s, &productive)) {
                    productive[lhs] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
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
        // Nullable fixpoint (over productive rules).
        let mut nullable = vec![false; n + 1];
        loop {
            let mut changed = false;
            for r in &ir.rules {
                let lhs = r.lhs as usize;
                if lhs < n
                    && !nullable[lhs]
                    && r.rhs.iter().all(|s| match *s {
                        IrSymbol::Nonterminal(x) => {
                            nullable.get(x as usize).copied().unwrap_or(false)
                        }
                        IrSymbol::Lexeme(_) => false,
                    })
                {
                    nullable[lhs] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
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

    /// Bytes held.
    pub fn bytes_used(&self) -> usize {
        (self.rhs.len() + self.lhs_at.len() + self.by_lhs.len() + self.by_lhs_start.len()) * 4
            + self.nullable.len()
    }
}
